-- The rebuy rule (docs/api.md "The rebuy rule"): the most orders one buyer may open in a sale, and the
-- wait after their second closed order. MySQL holds them so that a rebuild of the sale's Redis state
-- writes them back; sales created before the rule get the built-in defaults at their next rebuild.
-- AlterTable
ALTER TABLE `sales` ADD COLUMN `max_orders_per_buyer` INTEGER NOT NULL DEFAULT 3,
    ADD COLUMN `rebuy_cooldown_seconds` INTEGER NOT NULL DEFAULT 30;
