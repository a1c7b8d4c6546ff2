-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "resource" (
    "resourceType" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "versionId" UUID NOT NULL,
    "lastUpdated" TIMESTAMPTZ(3) NOT NULL,
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    "content" JSON,

    CONSTRAINT "resource_pkey" PRIMARY KEY ("resourceType","id")
);

-- CreateTable
CREATE TABLE "resource_history" (
    "versionId" UUID NOT NULL,
    "resourceType" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "lastUpdated" TIMESTAMPTZ(3) NOT NULL,
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    "content" JSON,

    CONSTRAINT "resource_history_pkey" PRIMARY KEY ("versionId")
);

-- CreateTable
CREATE TABLE "token_index" (
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "system" TEXT,
    "value" TEXT,
    "text" TEXT,

    CONSTRAINT "token_index_pkey" PRIMARY KEY ("resourceType","resourceId","seq")
);

-- CreateTable
CREATE TABLE "string_index" (
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "exact" TEXT NOT NULL,

    CONSTRAINT "string_index_pkey" PRIMARY KEY ("resourceType","resourceId","seq")
);

-- CreateTable
CREATE TABLE "date_index" (
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "start" TIMESTAMPTZ(3),
    "end" TIMESTAMPTZ(3),

    CONSTRAINT "date_index_pkey" PRIMARY KEY ("resourceType","resourceId","seq")
);

-- CreateTable
CREATE TABLE "number_index" (
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "value" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "number_index_pkey" PRIMARY KEY ("resourceType","resourceId","seq")
);

-- CreateTable
CREATE TABLE "quantity_index" (
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "value" DOUBLE PRECISION NOT NULL,
    "system" TEXT,
    "unit" TEXT,

    CONSTRAINT "quantity_index_pkey" PRIMARY KEY ("resourceType","resourceId","seq")
);

-- CreateTable
CREATE TABLE "reference_index" (
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "targetType" TEXT,
    "targetId" TEXT,
    "url" TEXT,

    CONSTRAINT "reference_index_pkey" PRIMARY KEY ("resourceType","resourceId","seq")
);

-- CreateTable
CREATE TABLE "uri_index" (
    "projectId" TEXT NOT NULL,
    "resourceType" TEXT NOT NULL,
    "resourceId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "uri_index_pkey" PRIMARY KEY ("resourceType","resourceId","seq")
);

-- CreateTable
CREATE TABLE "binary_content" (
    "key" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "contentType" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "binary_content_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "resource_projectId_resourceType_lastUpdated_id_idx" ON "resource"("projectId", "resourceType", "lastUpdated", "id");

-- CreateIndex
CREATE INDEX "resource_history_resourceType_id_lastUpdated_idx" ON "resource_history"("resourceType", "id", "lastUpdated");

-- CreateIndex
CREATE INDEX "resource_history_projectId_resourceType_lastUpdated_idx" ON "resource_history"("projectId", "resourceType", "lastUpdated");

-- CreateIndex
CREATE INDEX "token_index_projectId_resourceType_code_value_system_idx" ON "token_index"("projectId", "resourceType", "code", "value", "system");

-- CreateIndex
CREATE INDEX "string_index_projectId_resourceType_code_value_idx" ON "string_index"("projectId", "resourceType", "code", "value");

-- CreateIndex
CREATE INDEX "date_index_projectId_resourceType_code_start_idx" ON "date_index"("projectId", "resourceType", "code", "start");

-- CreateIndex
CREATE INDEX "date_index_projectId_resourceType_code_end_idx" ON "date_index"("projectId", "resourceType", "code", "end");

-- CreateIndex
CREATE INDEX "number_index_projectId_resourceType_code_value_idx" ON "number_index"("projectId", "resourceType", "code", "value");

-- CreateIndex
CREATE INDEX "quantity_index_projectId_resourceType_code_value_idx" ON "quantity_index"("projectId", "resourceType", "code", "value");

-- CreateIndex
CREATE INDEX "reference_index_projectId_resourceType_code_targetId_idx" ON "reference_index"("projectId", "resourceType", "code", "targetId");

-- CreateIndex
CREATE INDEX "reference_index_projectId_targetType_targetId_idx" ON "reference_index"("projectId", "targetType", "targetId");

-- CreateIndex
CREATE INDEX "uri_index_projectId_resourceType_code_value_idx" ON "uri_index"("projectId", "resourceType", "code", "value");

