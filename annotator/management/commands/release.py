import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Release
from annotator.releases import publish as releases
from common.cli import progress_bar


class Command(BaseCommand):
    help = (
        "Publish the benchmark as an immutable release (a folder under QUIRE_DATA_DIR/releases: the INQUIRE CSVs, "
        "judgments, agreement and completeness, TREC qrels, Parquet, SHA256SUMS), list releases, show one, or diff "
        "two."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="freeze a release")
        create.add_argument("name", help="letters, digits, '.', '_' and '-', e.g. inquire-v1.0")
        create.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")
        create.add_argument("--split", action="append", dest="splits", help="only queries of this split (repeatable)")
        create.add_argument("--notes", type=Path, help="a text file of notes kept with the release")
        actions.add_parser("list", help="every release, newest first")
        show = actions.add_parser("show", help="one release: its record, figures and whether its files are intact")
        show.add_argument("name")
        compare = actions.add_parser("diff", help="what changed from release A to release B")
        compare.add_argument("first")
        compare.add_argument("second")
        for action in (show, compare):
            action.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, action: str, **options: Any) -> None:
        try:
            getattr(self, f"_{action}")(options)
        except releases.BadRelease as bad:
            raise CommandError(str(bad)) from None

    def _create(self, options: dict[str, Any]) -> None:
        notes = ""
        if options["notes"]:
            try:
                notes = options["notes"].read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise CommandError(f"--notes {options['notes']}: cannot be read as UTF-8 text ({error}).") from None
        with progress_bar("Releasing", "steps") as progress:
            release = releases.create(
                options["name"],
                query_ids=options["query_ids"],
                splits=options["splits"],
                notes=notes,
                progress=progress,
            )
        self.stdout.write(f"Release {release.name}: {release.folder} ({release.figures['queries']} queries)")
        for name, rows in sorted(release.figures["rows"].items()):
            self.stdout.write(f"  {name}: {rows} rows")
        self.stdout.write(f"  SHA256SUMS: sha256 {release.content_hash}")

    def _list(self, options: dict[str, Any]) -> None:
        for release in Release.objects.all():
            who = release.created_by.get_username() if release.created_by else "a command"
            self.stdout.write(
                f"{release.name}  {release.created_at:%Y-%m-%d %H:%M}  by {who}  {release.figures.get('queries', 0)} "
                f"queries  sha256 {release.content_hash[:12]}"
            )

    def _show(self, options: dict[str, Any]) -> None:
        release = releases.get(options["name"])
        broken = releases.verify(release)
        shown = {
            "name": release.name, "folder": release.folder, "created_at": release.created_at.isoformat(),
            "created_by": release.created_by.get_username() if release.created_by else None,
            "content_hash": release.content_hash, "query_ids": release.query_ids, "figures": release.figures,
            "notes": release.notes, "intact": not broken, "changed_files": broken,
        }  # fmt: skip
        if options["json"]:
            self.stdout.write(json.dumps(shown, indent=2))
        else:
            for key, value in shown.items():
                self.stdout.write(f"{key}: {value}")
        if broken:
            raise CommandError(f"Release {release.name} was changed on disk: {', '.join(broken)} no longer match.")

    def _diff(self, options: dict[str, Any]) -> None:
        found = releases.diff(releases.get(options["first"]), releases.get(options["second"]))
        if options["json"]:
            self.stdout.write(json.dumps(found, indent=2))
            return
        self.stdout.write(f"{found['from']} -> {found['to']}")
        self.stdout.write(f"queries added: {found['queries_added'] or '-'}; removed: {found['queries_removed'] or '-'}")
        self.stdout.write(f"labels changed: {len(found['labels_changed'])}")
        for row in found["labels_changed"]:
            self.stdout.write(
                f"  query {row['query_id']} image {row['image_id']}: {row['before'] or '-'} -> {row['after'] or '-'}"
            )
        names = [found["from"], found["to"]]
        agreement = [_flat(found["agreement"][name] or {}) for name in names]
        self.stdout.write("\nagreement, overall:")
        self.stdout.write(_columns(["figure", *names], _rows(agreement)))
        completeness = [
            {f"query {query}": _claim(claim) for query, claim in found["completeness"][name].items()} for name in names
        ]
        self.stdout.write("\ncompleteness claims:")
        self.stdout.write(_columns(["query", *names], _rows(completeness)))


def _flat(figures: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested figures as one level, "a.b" for b inside a."""
    flat: dict[str, Any] = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            flat |= _flat(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _claim(claim: dict[str, Any]) -> str:
    bound = claim.get("bound")
    return str(claim["status"]) + ("" if bound is None else f", recall >= {bound:.3f}")


def _rows(sides: list[dict[str, Any]]) -> list[list[str]]:
    """One row per key of either side (in first-seen order), each side's value or "-"."""
    keys = list(dict.fromkeys(key for side in sides for key in side))
    return [[key, *(_cell(side.get(key)) for side in sides)] for key in keys]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _columns(header: list[str], rows: list[list[str]]) -> str:
    """An aligned table: the first column left, the others right (figures line up by their last digit)."""
    if not rows:
        return "  (none in either release)"
    table = [header, *rows]
    widths = [max(len(row[n]) for row in table) for n in range(len(header))]
    return "\n".join(
        "  " + "  ".join(c.ljust(w) if n == 0 else c.rjust(w) for n, (c, w) in enumerate(zip(row, widths, strict=True)))
        for row in table
    )
