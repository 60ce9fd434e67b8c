-- The order writer's statements, kept by the database (packages/order-store/src/order-writer.ts calls them).
--
-- insert_orders_from_json: a batch's rows travel as ONE parameter, a JSON array that JSON_TABLE unpacks
-- ([reservation id, user id, quantity, reserved at in epoch ms], each as text). Columns are read as text
-- and converted by the INSERT itself, so a value that does not fit fails the statement in strict mode
-- exactly as a bound value would (JSON_TABLE's own typed columns would round or clamp it with a mere
-- warning). reserved_at is epoch milliseconds added to the epoch as a DATETIME: integer arithmetic in UTC,
-- with no session time zone involved (FROM_UNIXTIME would apply one). pay_by is reserved_at plus the
-- sale's payment window, from the sale row the caller holds locked: the reserve script's clock, not the
-- worker's; a pay_by past the last instant a DATETIME holds (9999-12-31 23:59:59.999) is a pay_by at it.
-- It runs in the caller's transaction and reports the rows inserted in its OUT parameter.
--
-- write_new_orders: the quick pass, one round trip per batch: in a transaction of its own, the guarded
-- UPDATE takes the sale row's lock, checks generation (byte for byte), stock and the per-user limit, and
-- counts the batch (sale-counters.ts); then the INSERT, which relies on the unique keys to refuse a
-- redelivered entry or a buyer who already has a live order. Any refusal rolls everything back and is
-- raised: a unique key's error as MySQL gives it, a guard's as SQLSTATE 45000 with error number 31001,
-- which the writer answers with its careful pass. Its parameters take any generation and any whole
-- number an entry may carry: a value no sale can match fails the guard (and the careful pass names
-- the entry), never the call.
--
-- A routine keeps the sql_mode it was created under: strict mode is set here, whatever the server's.
SET SESSION sql_mode = IF(@@SESSION.sql_mode = '', 'STRICT_TRANS_TABLES', CONCAT(@@SESSION.sql_mode, ',STRICT_TRANS_TABLES'));

CREATE PROCEDURE insert_orders_from_json(IN p_sale_id INT, IN p_rows LONGTEXT CHARACTER SET utf8mb4, OUT p_inserted INT)
  SQL SECURITY INVOKER
BEGIN
  INSERT INTO orders (reservation_id, sale_id, user_id, quantity, status, reserved_at, pay_by)
  SELECT j.reservation_id, s.id, j.user_id, j.quantity, 'created',
    TIMESTAMPADD(MICROSECOND, CAST(j.reserved_at_ms AS UNSIGNED) * 1000, TIMESTAMP '1970-01-01 00:00:00'),
    TIMESTAMPADD(MICROSECOND, LEAST(CAST(j.reserved_at_ms AS UNSIGNED) + s.payment_window_seconds * 1000, 253402300799999) * 1000, TIMESTAMP '1970-01-01 00:00:00')
  FROM JSON_TABLE(p_rows, '$[*]' COLUMNS (
    reservation_id TEXT PATH '$[0]', user_id TEXT PATH '$[1]', quantity TEXT PATH '$[2]', reserved_at_ms TEXT PATH '$[3]'
  )) AS j
  JOIN sales s ON s.id = p_sale_id;
  SET p_inserted = ROW_COUNT();
END;

CREATE PROCEDURE write_new_orders(
  IN p_sale_id INT,
  IN p_generation TEXT CHARACTER SET utf8mb4,
  IN p_orders BIGINT,
  IN p_units BIGINT,
  IN p_largest BIGINT,
  IN p_rows LONGTEXT CHARACTER SET utf8mb4
)
  SQL SECURITY INVOKER
BEGIN
  DECLARE inserted INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    RESIGNAL;
  END;
  START TRANSACTION;
  UPDATE sales SET sold_units = sold_units + p_units, orders_written = orders_written + p_orders, units_written = units_written + p_units
  WHERE id = p_sale_id AND redis_generation = p_generation COLLATE utf8mb4_bin AND sold_units + p_units <= stock
    AND per_user_limit >= p_largest;
  IF ROW_COUNT() <> 1 THEN
    -- The sale is missing, was rebuilt under another generation, has fewer units left than the batch,
    -- or an entry is over its per-user limit.
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'flashsale: the batch needs its lookups', MYSQL_ERRNO = 31001;
  END IF;
  CALL insert_orders_from_json(p_sale_id, p_rows, inserted);
  IF inserted <> p_orders THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'flashsale: the batch inserted fewer orders than it holds', MYSQL_ERRNO = 31002;
  END IF;
  COMMIT;
END;
