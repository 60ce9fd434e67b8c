-- The replication id (master_replid) of the Redis server that held the sale at the reconciler's last
-- checkpoint: a look that finds another one knows the state now comes from another history of writes
-- (a replica promoted, a restart) and has the sale rebuilt from MySQL, even when no count went back.
ALTER TABLE `sales` ADD COLUMN `checkpoint_redis_replid` VARCHAR(40) NULL;
