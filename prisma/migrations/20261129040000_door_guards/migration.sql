-- The door's settings against account farms (issue 41), null for an open sale and for a queued sale
-- recorded before them (which then keeps the door it had: no show-up window, no challenge, no claim,
-- no cap). A rebuild writes them back into Redis with the rest of the door's terms.
ALTER TABLE `sales` ADD COLUMN `show_up_seconds` INTEGER NULL,
    ADD COLUMN `challenge` VARCHAR(8) NULL,
    ADD COLUMN `challenge_max_number` INTEGER NULL,
    ADD COLUMN `require_claim` VARCHAR(64) NULL,
    ADD COLUMN `max_queue_size` INTEGER NULL;
