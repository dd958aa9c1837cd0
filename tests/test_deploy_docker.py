"""Not a test module (conftest.py leaves it out of collection): what
tests/test_deploy_kubernetes.py and tests/test_deploy_compose*.py import under this name, from
tests/integration/deploy/test_deploy_docker.py where these tests now live."""

from tests.integration.deploy.test_deploy_docker import bridge_args, cli_problem

__all__ = ["bridge_args", "cli_problem"]
