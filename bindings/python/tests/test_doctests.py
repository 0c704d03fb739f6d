"""The docstrings' examples run."""

import doctest

import pytest

import idforge
import idforge.errors
import idforge.native


@pytest.mark.parametrize("module", [idforge, idforge.errors, idforge.native])
def test_docstring_examples(module):
    result = doctest.testmod(module, extraglobs={"idforge": idforge})
    assert result.attempted > 0 and result.failed == 0
