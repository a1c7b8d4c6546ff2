-- Range values of number parameters (RiskAssessment `probability`: probabilityDecimal or
-- probabilityRange). A Range is one number_index row with its low in "value" and its high in "high"
-- ('-Infinity' / 'Infinity' for an open end), as quantity_index keeps them since 0011; a decimal or
-- integer leaves "high" null, so existing rows need no rewrite and adding the column rewrites
-- nothing. Resources holding a Range get rows once written or reindexed (`npm run reindex`).
--
-- The search tests `gt`, `ge` and `ap` as "value ... OR high ..." (src/search/query/conditions.ts,
-- numberComparison), so that the index on "value" keeps serving plain numbers; the index below
-- serves the "high" side. Partial (hand-written: Prisma's schema declares no partial indexes), so
-- it holds the Range rows only and writes of plain numbers maintain nothing more.

-- AlterTable
ALTER TABLE "number_index" ADD COLUMN     "high" DOUBLE PRECISION;

CREATE INDEX "number_index_range_high_idx" ON "number_index"("projectId", "resourceType", "code", "high") WHERE "high" IS NOT NULL;
