"""The demo trains to a fixed accuracy, and its checkpoint reproduces it."""
import pytest

from fnad import demo


def test_demo_trains_and_reloads(tmp_path, capsys):
    accuracy = demo.main(["--epochs", "3", "--output-dir", str(tmp_path), "--seed", "0"])
    assert accuracy >= 0.93
    assert (tmp_path / "params.safetensors").exists()
    out = capsys.readouterr().out
    assert "after reloading" in out


def test_demo_help_lists_options(capsys):
    with pytest.raises(SystemExit):
        demo.main(["--help"])
    out = capsys.readouterr().out
    for option in ("--epochs", "--batch-size", "--model", "--seed", "--output-dir"):
        assert option in out
