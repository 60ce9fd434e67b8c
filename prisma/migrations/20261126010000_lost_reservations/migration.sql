-- Reservations answered 202 that neither store holds any more, named (issue 21): a reconciliation found
-- them in Redis's buyer records after MySQL had lost their orders (a restored dump, a replica promoted
-- behind) and MySQL could not take them back. Redis is rebuilt from MySQL right after, so this row is
-- the only record left of them: a buyer's lookup answers `lost` from it, a payment for one is owed back,
-- and the operator lists them (GET /api/admin/sales/:id/losses). Their count is in sales.lost_reservations.
-- CreateTable
CREATE TABLE `lost_reservations` (
    `reservation_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    `sale_id` INTEGER NOT NULL,
    `user_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    `quantity` INTEGER NOT NULL,
    `reason` VARCHAR(32) NOT NULL,
    `reserved_at` DATETIME(3) NULL,
    `detected_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (`reservation_id`),
    INDEX `lost_reservations_sale_id_reservation_id_idx`(`sale_id`, `reservation_id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- A payment event for a reservation no store knows, of a sale that lost reservations it cannot name: it
-- may be one of them, so it is kept for the operator rather than answered 404 and dropped.
-- AlterTable
ALTER TABLE `payment_events` MODIFY `outcome` ENUM('paid', 'refund_due', 'unmatched') NOT NULL;
