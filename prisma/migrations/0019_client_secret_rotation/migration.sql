-- ClientApplication/$rotate-secret (src/auth/secret-rotation.ts): the previous secret of a client
-- stays valid until "retiringUntil", so running apps can switch to the new one.

-- AlterTable
ALTER TABLE "auth_credential" ADD COLUMN     "retiringHash" TEXT,
ADD COLUMN     "retiringSealed" TEXT,
ADD COLUMN     "retiringUntil" TIMESTAMPTZ(3);

