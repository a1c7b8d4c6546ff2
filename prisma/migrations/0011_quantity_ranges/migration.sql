-- Range values of plain quantity parameters (issue 4: `context-quantity` of the conformance and
-- knowledge resources, Condition `onset-age` and `abatement-age`, Group `characteristic-range`).
-- A Range is one quantity_index row with its low in "value" and its high in "high" ('-Infinity' /
-- 'Infinity' for an open end), as composite_index keeps them since 0010; a Quantity leaves "high"
-- null, so existing rows need no rewrite and adding the column rewrites nothing. Resources holding
-- a Range get rows once written or reindexed.
--
-- The search tests `gt`, `ge` and `ap` as "value ... OR high ..." (src/search/query/conditions.ts,
-- numberComparison), so that the index on "value" keeps serving plain quantities; the index below
-- serves the "high" side. Partial (hand-written: Prisma's schema declares no partial indexes), so
-- it holds the Range rows only and writes of Quantities maintain nothing more.

-- AlterTable
ALTER TABLE "quantity_index" ADD COLUMN     "high" DOUBLE PRECISION;

CREATE INDEX "quantity_index_range_high_idx" ON "quantity_index"("projectId", "resourceType", "code", "high") WHERE "high" IS NOT NULL;
