-- CreateTable
CREATE TABLE "terminology_system" (
    "id" UUID NOT NULL,
    "projectId" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "version" TEXT NOT NULL DEFAULT '',
    "resourceId" TEXT,
    "name" TEXT,
    "properties" JSON,
    "hierarchyMeaning" TEXT,
    "caseSensitive" BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "terminology_system_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "terminology_concept" (
    "systemId" UUID NOT NULL,
    "code" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "display" TEXT,
    "definition" TEXT,
    "abstract" BOOLEAN NOT NULL DEFAULT false,
    "inactive" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "terminology_concept_pkey" PRIMARY KEY ("systemId","code")
);

-- CreateTable
CREATE TABLE "terminology_designation" (
    "systemId" UUID NOT NULL,
    "code" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "language" TEXT,
    "useSystem" TEXT,
    "useCode" TEXT,
    "useDisplay" TEXT,
    "value" TEXT NOT NULL,

    CONSTRAINT "terminology_designation_pkey" PRIMARY KEY ("systemId","code","seq")
);

-- CreateTable
CREATE TABLE "terminology_property" (
    "systemId" UUID NOT NULL,
    "code" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "property" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "terminology_property_pkey" PRIMARY KEY ("systemId","code","seq")
);

-- CreateTable
CREATE TABLE "terminology_hierarchy" (
    "systemId" UUID NOT NULL,
    "parent" TEXT NOT NULL,
    "child" TEXT NOT NULL,

    CONSTRAINT "terminology_hierarchy_pkey" PRIMARY KEY ("systemId","parent","child")
);

-- CreateTable
CREATE TABLE "terminology_closure" (
    "systemId" UUID NOT NULL,
    "ancestor" TEXT NOT NULL,
    "descendant" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,

    CONSTRAINT "terminology_closure_pkey" PRIMARY KEY ("systemId","ancestor","descendant")
);

-- CreateIndex
CREATE UNIQUE INDEX "terminology_system_resourceId_key" ON "terminology_system"("resourceId");

-- CreateIndex
CREATE INDEX "terminology_system_projectId_url_version_idx" ON "terminology_system"("projectId", "url", "version");

-- CreateIndex
CREATE INDEX "terminology_concept_systemId_seq_idx" ON "terminology_concept"("systemId", "seq");

-- CreateIndex
CREATE INDEX "terminology_property_systemId_property_value_idx" ON "terminology_property"("systemId", "property", "value");

-- CreateIndex
CREATE INDEX "terminology_hierarchy_systemId_child_idx" ON "terminology_hierarchy"("systemId", "child");

-- CreateIndex
CREATE INDEX "terminology_closure_systemId_ancestor_seq_idx" ON "terminology_closure"("systemId", "ancestor", "seq");

