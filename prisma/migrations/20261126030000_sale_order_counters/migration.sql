-- A sale's orders and units by status, kept by the transactions that change them, so the stats and the
-- dashboard read a handful of rows instead of grouping every order of the sale (364-659 ms at 300,000
-- orders, and the 2 s statement timeout near a million).
--
-- On the sale row, raised by statements the transactions already run on it: orders_written/units_written
-- by the order writer's guarded UPDATE of sold_units (once per batch), cancelled_*/expired_* by the
-- UPDATE that lowers sold_units when orders close. Written orders are never deleted and only leave
-- `created`, so created = written - paid - cancelled - expired.
ALTER TABLE `sales` ADD COLUMN `orders_written` INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN `units_written` INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN `cancelled_orders` INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN `cancelled_units` INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN `expired_orders` INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN `expired_units` INTEGER NOT NULL DEFAULT 0;

-- Paid orders: a payment locks the order row only (never the sale row, which the order batches hold),
-- so its count lives apart, spread over 16 slots (the order id modulo 16) that payments of one sale do
-- not queue on; a reader sums at most 16 rows. No foreign key to sales on purpose: its check would take a
-- shared lock on the sale row, the very row a payment must not wait for.
CREATE TABLE `sale_paid_counts` (
    `sale_id` INTEGER NOT NULL,
    `slot` TINYINT UNSIGNED NOT NULL,
    `orders` INTEGER NOT NULL DEFAULT 0,
    `units` INTEGER NOT NULL DEFAULT 0,

    PRIMARY KEY (`sale_id`, `slot`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- The units still owed back to Redis, per sale, read without walking the sale's settled returns.
CREATE INDEX `stock_returns_sale_id_state_idx` ON `stock_returns`(`sale_id`, `state`);

-- Backfill: the counters of the sales that exist, from their orders (once, here).
UPDATE `sales` s JOIN (
    SELECT `sale_id`,
        COUNT(*) AS orders, SUM(`quantity`) AS units,
        SUM(`status` = 'cancelled') AS cancelled_orders, SUM(IF(`status` = 'cancelled', `quantity`, 0)) AS cancelled_units,
        SUM(`status` = 'expired') AS expired_orders, SUM(IF(`status` = 'expired', `quantity`, 0)) AS expired_units
    FROM `orders` GROUP BY `sale_id`
) o ON o.`sale_id` = s.`id`
SET s.`orders_written` = o.orders, s.`units_written` = o.units,
    s.`cancelled_orders` = o.cancelled_orders, s.`cancelled_units` = o.cancelled_units,
    s.`expired_orders` = o.expired_orders, s.`expired_units` = o.expired_units;

INSERT INTO `sale_paid_counts` (`sale_id`, `slot`, `orders`, `units`)
    SELECT `sale_id`, 0, COUNT(*), SUM(`quantity`) FROM `orders` WHERE `status` = 'paid' GROUP BY `sale_id`;
