"""Property-based conformance: schemathesis drives the live server from its own OpenAPI schema.

Every generated request (valid or not) must get a documented status, a JSON body matching the
documented schema, never a 5xx, a 401 without the key, and a 4xx for schema-invalid data.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.config import SchemathesisConfig  # noqa: E402

from covrag.server import ServerConfig, create_app  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402

pytestmark = pytest.mark.model

KEY = "schemathesis-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
# The closed lists requests choose from: every selector (the server's default list) and three
# estimators that need no model beyond the embedding one preloaded as the default.
COVERAGES = ("embedding", "gold", "embedding(threshold=0.6)")


@pytest.fixture(scope="module")
def live_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reports = tmp_path_factory.mktemp("reports")
    (reports / "run.html").write_text("<!doctype html><title>run</title>")
    config = ServerConfig(
        api_key=KEY,
        default_coverage="embedding",
        coverages=COVERAGES,
        reports_dir=reports,
        max_body_bytes=200_000,
        timeout_s=60,
    )
    with serve_in_background(config) as url:
        yield url


# The schema is what the app publishes; it is loaded at collection time (schemathesis's lazy
# fixture loader does not work under this pytest), and the live server is checked to serve it.
# A schema-valid request may still give a spec pattern with parameters that are not the tunable
# ones, or a coverage estimator without aspects; the API answers those with its documented 422
# (naming the field), so 422 joins the statuses "positive data acceptance" accepts. A
# schema-violating body can also be too large (e.g. more passages than maxItems), and 413 is a
# rejection too. Every other check is as shipped.
APP_SCHEMA = create_app(
    ServerConfig(api_key=KEY, preload=False, default_coverage="embedding", coverages=COVERAGES)
).openapi()
ACCEPTED = ["2xx", "401", "404", "422"]
REJECTED = ["400", "401", "404", "405", "413", "422"]
schema = schemathesis.openapi.from_dict(
    APP_SCHEMA,
    config=SchemathesisConfig.from_dict(
        {
            "checks": {
                "positive_data_acceptance": {"expected-statuses": ACCEPTED},
                "negative_data_rejection": {"expected-statuses": REJECTED},
            }
        }
    ),
)


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_server_conforms_to_its_openapi_schema(case: Any, live_url: str) -> None:
    case.call_and_validate(base_url=live_url, headers=AUTH, timeout=60)


def test_live_server_publishes_the_tested_schema(live_url: str) -> None:
    import httpx

    published = httpx.get(f"{live_url}/openapi.json").json()
    assert published == APP_SCHEMA
    paths = published["paths"]
    assert {"/v1/select", "/healthz", "/reports", "/reports/{name}"} <= set(paths)
    assert set(paths["/v1/select"]["post"]["responses"]) >= {"200", "401", "413", "422", "504"}
    fields = published["components"]["schemas"]["SelectRequest"]["properties"]
    coverage = next(c["enum"] for c in fields["coverage"]["anyOf"] if "enum" in c)
    assert coverage == list(COVERAGES)
    selectors = next(c["enum"] for c in fields["selector"]["anyOf"] if "enum" in c)
    assert "greedy-coverage" in selectors and not any("model" in s for s in selectors)
