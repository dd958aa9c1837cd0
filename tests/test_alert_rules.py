"""Not a test module (conftest.py leaves it out of collection): what
tests/test_deploy_kubernetes.py and tests/test_deploy_compose*.py import under this name, from
tests/integration/test_alert_rules.py where these tests now live."""

from tests.integration.test_alert_rules import alert_rules

__all__ = ["alert_rules"]
