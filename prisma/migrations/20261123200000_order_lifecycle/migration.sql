-- Orders that get paid, expire or are cancelled, and the units they give back.

-- A sale's payment window (seconds a winner has to pay), fixed when the sale is created; and when its
-- current Redis generation began (MySQL's clock, set by every rebuild): the reconciler's loss count
-- tells the orders a rebuild restored from those that closed before it.
ALTER TABLE `sales`
    ADD COLUMN `payment_window_seconds` INTEGER NOT NULL DEFAULT 900,
    ADD COLUMN `generation_at` DATETIME(3) NULL,
    ADD CONSTRAINT `sales_payment_window_range` CHECK (`payment_window_seconds` BETWEEN 10 AND 86400);

-- pay_by: the order expires once it is still `created` past this instant (reserved_at + the sale's
-- window). Orders written before this migration get a whole window from now, not from their
-- reservation: an upgrade in the middle of a sale must not expire every unpaid order at once.
-- live_user_id: the buyer while the order is live (`created` or `paid`), NULL once it is cancelled or
-- expired. The unique key moves onto it: one LIVE order per buyer and sale, so a buyer whose order
-- expired may buy again, and MySQL still refuses a second live one whatever the code above it does.
ALTER TABLE `orders`
    ADD COLUMN `pay_by` DATETIME(3) NULL,
    ADD COLUMN `paid_at` DATETIME(3) NULL,
    ADD COLUMN `closed_at` DATETIME(3) NULL,
    ADD COLUMN `payment_event_id` VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
    ADD COLUMN `live_user_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin
        AS (IF(`status` IN ('created', 'paid'), `user_id`, NULL)) PERSISTENT;

UPDATE `orders` o JOIN `sales` s ON s.id = o.sale_id
SET o.pay_by = GREATEST(o.reserved_at, NOW(3)) + INTERVAL s.payment_window_seconds SECOND;

ALTER TABLE `orders` MODIFY `pay_by` DATETIME(3) NOT NULL;

CREATE UNIQUE INDEX `orders_sale_id_live_user_id_key` ON `orders`(`sale_id`, `live_user_id`);
DROP INDEX `orders_sale_id_user_id_key` ON `orders`;
-- A buyer's orders of a sale (the writer's lookups, the rebuild), live or not.
CREATE INDEX `orders_sale_id_user_id_idx` ON `orders`(`sale_id`, `user_id`);
-- The expiry sweep: the unpaid orders due first.
CREATE INDEX `orders_status_pay_by_idx` ON `orders`(`status`, `pay_by`);

-- The outbox of units owed back to Redis: one row per order that closed (cancelled or expired), written
-- in the transaction that closed it. Keyed by the reservation, so an order can owe its units once at
-- most. `generation` is the sale's Redis generation at the close: the return applies to that state only
-- (a rebuild after the close already counted the units as remaining, and settles the row as `rebuilt`).
CREATE TABLE `stock_returns` (
    `reservation_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    `sale_id` INTEGER NOT NULL,
    `user_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    `quantity` INTEGER NOT NULL,
    `generation` VARCHAR(36) NOT NULL,
    `reason` ENUM('expired', 'cancelled') NOT NULL,
    `state` ENUM('pending', 'returned', 'rebuilt') NOT NULL DEFAULT 'pending',
    `created_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    `settled_at` DATETIME(3) NULL,
    PRIMARY KEY (`reservation_id`),
    INDEX `stock_returns_state_created_at_idx`(`state`, `created_at`),
    INDEX `stock_returns_sale_id_generation_idx`(`sale_id`, `generation`),
    CONSTRAINT `stock_returns_sale_id_fkey` FOREIGN KEY (`sale_id`) REFERENCES `sales`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT `stock_returns_quantity_positive` CHECK (`quantity` >= 1)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- Every payment provider event processed, with the outcome it was answered: a replay of the same id
-- answers the same, and a payment for an order that had expired or was cancelled stays on record as a
-- refund due.
CREATE TABLE `payment_events` (
    `event_id` VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    `reservation_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    `sale_id` INTEGER NOT NULL,
    `amount_cents` BIGINT NOT NULL,
    `outcome` ENUM('paid', 'refund_due') NOT NULL,
    `received_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (`event_id`),
    INDEX `payment_events_sale_id_outcome_idx`(`sale_id`, `outcome`),
    INDEX `payment_events_reservation_id_idx`(`reservation_id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
