"""Pod volumes on a node: payloads, the atomic writer, ownership, and the volume manager."""
