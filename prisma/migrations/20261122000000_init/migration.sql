-- CreateTable
CREATE TABLE `sales` (
    `id` INTEGER NOT NULL AUTO_INCREMENT,
    `name` VARCHAR(200) NOT NULL,
    `stock` INTEGER NOT NULL,
    `per_user_limit` INTEGER NOT NULL DEFAULT 1,
    `starts_at` DATETIME(3) NOT NULL,
    `ends_at` DATETIME(3) NOT NULL,
    `sold_units` INTEGER NOT NULL DEFAULT 0,
    `created_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),

    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `orders` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `reservation_id` VARCHAR(64) NOT NULL,
    `sale_id` INTEGER NOT NULL,
    `user_id` VARCHAR(64) NOT NULL,
    `quantity` INTEGER NOT NULL,
    `status` ENUM('created', 'paid', 'cancelled', 'expired') NOT NULL DEFAULT 'created',
    `reserved_at` DATETIME(3) NOT NULL,
    `created_at` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),

    UNIQUE INDEX `orders_reservation_id_key`(`reservation_id`),
    UNIQUE INDEX `orders_sale_id_user_id_key`(`sale_id`, `user_id`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- AddForeignKey
ALTER TABLE `orders` ADD CONSTRAINT `orders_sale_id_fkey` FOREIGN KEY (`sale_id`) REFERENCES `sales`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;

-- The last line of defence against overselling, below anything Prisma models: MariaDB refuses any
-- write that would put more units in orders than the sale has (or a negative or empty sale).
ALTER TABLE `sales` ADD CONSTRAINT `sales_sold_units_within_stock` CHECK (`sold_units` >= 0 AND `sold_units` <= `stock`);
ALTER TABLE `sales` ADD CONSTRAINT `sales_stock_positive` CHECK (`stock` > 0 AND `per_user_limit` >= 1);
ALTER TABLE `orders` ADD CONSTRAINT `orders_quantity_positive` CHECK (`quantity` >= 1);
