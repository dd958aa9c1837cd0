"""Not a test module (conftest.py leaves it out of collection): what
tests/test_deploy_kubernetes.py and tests/test_deploy_compose*.py import under this name, from
tests/unit/deploy/test_dashboards.py where these tests now live."""

from tests.unit.deploy.test_dashboards import DASHBOARD_FILES, load_dashboard

__all__ = ["DASHBOARD_FILES", "load_dashboard"]
