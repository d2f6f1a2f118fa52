import pytest


@pytest.fixture(scope="session")
def ipshell():
    """The one real IPython shell of the test session (IPython allows one per process)."""
    from IPython.testing.globalipapp import get_ipython, start_ipython
    return start_ipython() or get_ipython()
