-- AlterTable
ALTER TABLE `sales` ADD COLUMN `publish_state` ENUM('publishing', 'published', 'abandoned') NOT NULL DEFAULT 'published',
    ADD COLUMN `idempotency_key` VARCHAR(255) NULL,
    ADD COLUMN `request_hash` CHAR(64) NULL;

-- CreateIndex
CREATE UNIQUE INDEX `sales_idempotency_key_key` ON `sales`(`idempotency_key`);

-- CreateIndex
CREATE INDEX `sales_publish_state_idx` ON `sales`(`publish_state`);
