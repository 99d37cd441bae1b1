from tether.wire import WireError, decode_messages


def test_unknown_content_type_names_path() -> None:
    bad = [
        {"role": "user", "content": "hi", "timestamp": 1},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "video"}], "timestamp": 1},
    ]
    try:
        decode_messages(bad)
    except WireError as err:
        assert str(err) == "messages[1].content[1].type: unknown content type 'video'"
    else:
        raise AssertionError("decoding should have failed")
