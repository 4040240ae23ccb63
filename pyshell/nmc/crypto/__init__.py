"""Encryption and keyed hashes of personal data: the envelope that seals a notificatie's data
(sealing), the key-encryption keys that wrap its data keys (kek_ring), the peppered HMACs
(peppers), the secret files they are read from (secret_files) and the bytes both put into
their messages (message_bytes)."""
