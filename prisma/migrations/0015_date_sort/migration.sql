-- Pages sorted by a date parameter (issue 4). Hand-written: Prisma's schema does not declare
-- indexes on expressions.
--
-- `_sort=date` orders resources by the least of their date rows' COALESCE(start, "end"), and
-- `_sort=-date` by the greatest COALESCE("end", start) (src/search/service.ts, sortExpression).
-- Computed per match, that sort read every match's rows: `Observation?code=...&_sort=-date` over
-- 50,000 matches took ~470 ms. With the rows of a project's parameter in that order, then by
-- resource (the page's tie-break), a page is read from the first rows of the index
-- (service.ts, growingWindowPage): a resource's first row there holds its sort value.

CREATE INDEX "date_index_sort_low_idx" ON "date_index" ("projectId", "resourceType", "code", (COALESCE("start", "end")), "resourceId");

CREATE INDEX "date_index_sort_high_idx" ON "date_index" ("projectId", "resourceType", "code", (COALESCE("end", "start")) DESC, "resourceId");
