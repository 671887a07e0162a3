"""The one-line reason an attempt's record keeps for a stage that failed or a try kbx redid."""

from kbx.driver.attempt import _first_line


def test_a_plain_message_keeps_its_first_line():
    assert _first_line("judge failed: the judge exited\nits stderr: nothing\n") == "judge failed: the judge exited"
    assert _first_line("\n\n  reference timing failed at n1024: out of memory  \n") == (
        "reference timing failed at n1024: out of memory")
    assert _first_line("") == "" and _first_line(" \n \n") == ""


def test_a_traceback_gives_way_to_the_exception_it_ends_with():
    traceback = ('Traceback (most recent call last):\n  File "/tmp/job/candidate.py", line 3, in <module>\n'
                 '    raise ValueError("bad shape")\nValueError: bad shape\nsecond line of its message\n')
    assert _first_line(traceback) == "ValueError: bad shape"
    assert _first_line("reference timing failed: " + traceback) == "reference timing failed: ValueError: bad shape"


def test_a_chained_traceback_gives_the_last_exception_and_a_long_line_is_cut():
    chained = ('Traceback (most recent call last):\n  File "a.py", line 1, in f\n    g()\nKeyError: 1\n\n'
               'During handling of the above exception, another exception occurred:\n\n'
               'Traceback (most recent call last):\n  File "a.py", line 4, in f\n    h()\nRuntimeError: CUDA error\n')
    assert _first_line(chained) == "RuntimeError: CUDA error"
    assert len(_first_line("x" * 1000)) == 300
