-- The door (a sale's waiting room, packages/sales): a sale is `open` (a race, as before) or `queue`
-- (bought through the waiting room). The settings are null for an open sale; MySQL holds them so that a
-- rebuild of the sale's Redis state writes them back (the admit rate and the door's pause may change live).
-- AlterTable
ALTER TABLE `sales` ADD COLUMN `admission_mode` ENUM('open', 'queue') NOT NULL DEFAULT 'open',
    ADD COLUMN `pre_queue_seconds` INTEGER NULL,
    ADD COLUMN `admit_per_second` DOUBLE NULL,
    ADD COLUMN `admission_ttl_seconds` INTEGER NULL,
    ADD COLUMN `no_show_factor` DOUBLE NULL,
    ADD COLUMN `admission_paused` BOOLEAN NOT NULL DEFAULT false;
