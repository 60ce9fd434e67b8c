-- AlterTable
ALTER TABLE `sales` ADD COLUMN `checkpoint_stream_id` VARCHAR(41) NULL;
