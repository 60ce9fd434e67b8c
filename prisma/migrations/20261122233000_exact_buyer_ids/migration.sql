-- Buyer and reservation ids compare byte for byte, as Redis and the gateway compare them. Under the
-- table's default utf8mb4_unicode_ci, `Alice` and `alice` (or `bob` and `bob `) were one buyer for the
-- unique key (sale_id, user_id) but two for Redis: the second one's 202 could never become an order.
-- NO PAD, so trailing spaces count too (MariaDB's utf8mb4_bin ignores them; on MySQL 8 the equivalent
-- is utf8mb4_0900_bin).
ALTER TABLE `orders`
    MODIFY `reservation_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY `user_id` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL;
