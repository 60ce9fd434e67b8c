-- AlterTable
ALTER TABLE `sales` ADD COLUMN `redis_generation` VARCHAR(36) NULL,
    ADD COLUMN `checkpoint_reservations` INTEGER NULL,
    ADD COLUMN `checkpoint_units` INTEGER NULL,
    ADD COLUMN `checkpoint_at` DATETIME(3) NULL,
    ADD COLUMN `lost_reservations` INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN `lost_units` INTEGER NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX `sales_ends_at_idx` ON `sales`(`ends_at`);

-- CreateIndex
CREATE INDEX `orders_sale_id_reserved_at_idx` ON `orders`(`sale_id`, `reserved_at`);
