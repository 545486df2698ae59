import stepfork
def test_version():
    assert stepfork.__version__ == "0.2.0"
