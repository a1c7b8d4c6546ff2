-- Composite search parameters (issue 4): one row per element and combination of component values
-- (src/search/indexing/composite.ts). The search index is keyed like token_index: every R4
-- composite's first component is a token (or, for DocumentReference relationship, a reference
-- stored as type and id), so an equality match on it is an index range scan ending in resourceId.
-- Rows exist for resources written after this migration; older resources need a reindex.

-- CreateTable
CREATE TABLE "composite_index" (
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "system1" TEXT,
    "value1" TEXT,
    "number1" DOUBLE PRECISION,
    "start1" TIMESTAMPTZ(3),
    "end1" TIMESTAMPTZ(3),
    "system2" TEXT,
    "value2" TEXT,
    "number2" DOUBLE PRECISION,
    "start2" TIMESTAMPTZ(3),
    "end2" TIMESTAMPTZ(3),
    "system3" TEXT,
    "value3" TEXT,
    "number3" DOUBLE PRECISION,
    "start3" TIMESTAMPTZ(3),
    "end3" TIMESTAMPTZ(3),

    CONSTRAINT "composite_index_pkey" PRIMARY KEY ("resourceType","resourceId","seq")
);

-- CreateIndex
CREATE INDEX "composite_index_projectId_resourceType_code_value1_system1__idx" ON "composite_index"("projectId", "resourceType", "code", "value1", "system1", "resourceId");

