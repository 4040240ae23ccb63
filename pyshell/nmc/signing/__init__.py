"""What the NMC signs and the bytes it signs: the delivery proof's ring and JWS
(afleverbewijs_signing), the webhook calls' ring and bearer JWT (webhook_signing), and the
canonical JSON that gives one value one byte string (canonical_json)."""
