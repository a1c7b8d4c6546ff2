-- A one-sided date bound's candidates (src/search/pages/date-bound-driven.ts) are the rows within
-- the bound on the sort indexes of 0015, and the rows open on the bound's side, which no range of
-- those indexes holds: a period without a start meets every upper bound (`lt`, `le`), one without
-- an end every lower bound. These partial indexes hold only such rows, so reading them costs what
-- they are, few in most data, whatever the statistics.

-- CreateIndex
CREATE INDEX IF NOT EXISTS "date_index_open_start_idx" ON "date_index" ("projectId", "resourceType", code, "resourceId") WHERE start IS NULL;

-- CreateIndex
CREATE INDEX IF NOT EXISTS "date_index_open_end_idx" ON "date_index" ("projectId", "resourceType", code, "resourceId") WHERE "end" IS NULL;
