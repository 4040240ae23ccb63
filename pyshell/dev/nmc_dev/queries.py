"""The development tools' SQL by name: nmc_dev/queries.sql (the embedded cluster's
databases, pgTAP, the test clock, the soak's, the drills' and the year's audits) together with
the product's queries the tools also send. A name is in one of the two files, never both."""

from psycopg import sql

from nmc import queries as product

DEV_QUERIES = product.load("nmc_dev")
_BOTH = DEV_QUERIES.keys() & product.QUERIES.keys()
if _BOTH:
    raise RuntimeError(f"queries named in both queries.sql files: {sorted(_BOTH)}")
QUERIES = {**product.QUERIES, **DEV_QUERIES}


def on_database(name: str, database: str) -> sql.Composed:
    """Query `name` with its {database} placeholder filled in as a quoted identifier."""
    return product.on_database(name, database, QUERIES)
