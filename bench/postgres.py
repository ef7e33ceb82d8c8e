"""A bench's own PostgreSQL database beside the one DATABASE_URL names, made empty, so that a bench that builds a
project at scale never touches the database it was pointed at."""


def own_database(url: str, suffix: str) -> str:
    """The URL of the database named as `url`'s with `suffix` (dropped and made again), on the same server."""
    import psycopg  # only where a bench builds on PostgreSQL

    base, name = url.rsplit("/", 1)
    bench = f"{name}_{suffix}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:  # the server's maintenance database
        admin.execute(f'DROP DATABASE IF EXISTS "{bench}"')
        admin.execute(f'CREATE DATABASE "{bench}"')
    return f"{base}/{bench}"
