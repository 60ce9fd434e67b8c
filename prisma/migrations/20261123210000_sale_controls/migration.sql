-- The operator's controls of a sale (pause, resume, close, add stock; apps/gateway/src/controls).
-- operator_paused_at: set while an operator holds the sale paused, apart from the reconciler's own pause
-- (which lives in Redis only, for the length of a reconciliation), so neither undoes the other.
-- controls_version: raised by every control under the sale row lock; Redis keeps the version it applied
-- (meta field ctl), so controls reaching Redis out of order, or again after a crash, never go back.
ALTER TABLE `sales` ADD COLUMN `operator_paused_at` DATETIME(3) NULL,
    ADD COLUMN `controls_version` INTEGER NOT NULL DEFAULT 0;
