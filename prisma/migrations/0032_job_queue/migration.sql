-- Each job belongs to the queue (JOB_QUEUE) of the server that queued it, and only servers of that
-- queue claim it or sweep its files. Every server has the same queue unless configured otherwise,
-- so jobs written before this migration join the default queue.

ALTER TABLE "job" ADD COLUMN "queue" TEXT NOT NULL DEFAULT 'default';

DROP INDEX "job_status_runAfter_idx";
CREATE INDEX "job_queue_status_runAfter_idx" ON "job"("queue", "status", "runAfter");
