"""Database routing: the search path's reads go to the read replica (memories/replicas.py),
everything else to the primary."""

from memories.replicas import PRIMARY, read_alias


class ReadReplicaRouter:
    def db_for_read(self, model, **hints):
        return read_alias()

    def db_for_write(self, model, **hints):
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints):
        return True  # the replica is a copy of the primary: the same rows

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == PRIMARY
