"""Where each followed log may resume, kept across restarts: the journal of checkpoints
(`_store`, `_journal`), one log's entry and the fingerprint that identifies its file
(`_entry`, `_file`), the crash-safe writes (`_io`), and the lock that keeps a second `run` off
the same state directory (`_lock`)."""
