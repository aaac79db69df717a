"""Content parts (``toolnexus._parts``): sources, the extension table, the size ceiling, the
wire shape on a ToolResult, and that a part's data never shows in a repr or a message."""

from __future__ import annotations

import base64
import dataclasses
import io
import pathlib
import pickle

import pytest

from toolnexus import Part, PartTooLargeError, ToolResult, WireFormatError
from toolnexus._parts import (
    DEFAULT_MAX_PART_BYTES,
    EXTENSIONS,
    get_max_part_bytes,
    set_max_part_bytes,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
PNG_B64 = base64.b64encode(PNG).decode()


@pytest.fixture
def png_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "chart.png"
    path.write_bytes(PNG)
    return path


# --------------------------------------------------------------------------- sources


def test_a_path_is_read_at_construction_and_named_after_its_file(png_file):
    part = Part.image(str(png_file))
    png_file.unlink()  # the part no longer needs the file
    assert part.to_dict() == {
        "type": "image",
        "mimeType": "image/png",
        "data": PNG_B64,
        "name": "chart.png",
    }
    assert part.to_bytes() == PNG and part.size == len(PNG)


def test_a_pathlike_reads_like_a_path(png_file):
    assert Part.image(png_file) == Part.image(str(png_file))


def test_bytes_bytearray_and_memoryview_need_an_explicit_mime_type():
    for raw in (PNG, bytearray(PNG), memoryview(PNG)):
        assert Part.image(raw, "image/png").data == PNG_B64
    with pytest.raises(ValueError, match=r"mime type of raw bytes; pass mime_type="):
        Part.image(PNG)


def test_a_binary_file_object_is_read_eagerly_and_left_open(png_file):
    with open(png_file, "rb") as handle:
        part = Part.image(handle)
        assert not handle.closed
    assert part.name == "chart.png" and part.mime_type == "image/png"
    anonymous = io.BytesIO(b"%PDF-1.7")
    part = Part.file(anonymous, "application/pdf")
    assert not anonymous.closed and part.to_bytes() == b"%PDF-1.7" and part.name is None


def test_a_text_mode_file_object_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "notes.pdf"
    path.write_text("hello")
    with open(path) as handle, pytest.raises(TypeError, match=r"binary mode \('rb'\)"):
        Part.file(handle)


def test_a_data_url_is_decoded_to_data_and_keeps_its_mime_type():
    part = Part.image(f"data:image/png;base64,{PNG_B64}")
    assert (part.mime_type, part.data, part.url) == ("image/png", PNG_B64, None)
    percent = Part.file("data:text/plain,hello%20world")
    assert percent.to_bytes() == b"hello world" and percent.mime_type == "text/plain"
    with pytest.raises(ValueError, match="not standard base64"):
        Part.image("data:image/png;base64,abc")


def test_an_https_url_is_kept_as_a_url_and_an_http_one_refused():
    part = Part.image("https://example.test/img/chart.PNG?size=2")
    assert part.to_dict() == {
        "type": "image",
        "mimeType": "image/png",
        "url": "https://example.test/img/chart.PNG?size=2",
    }
    assert part.size == 0 and part.data_url is None
    with pytest.raises(ValueError, match="keeps only https: URLs"):
        Part.image("http://example.test/a.png")
    with pytest.raises(ValueError, match="holds no bytes"):
        part.to_bytes()


def test_other_sources_are_refused_naming_what_is_accepted():
    with pytest.raises(TypeError, match=r"takes a path, os.PathLike, bytes, .* got int"):
        Part.image(42)


# --------------------------------------------------------------------------- mime types


def test_the_extension_table_is_the_familys_fixed_one():
    assert dict(EXTENSIONS) == {
        "png": ("image", "image/png"),
        "jpg": ("image", "image/jpeg"),
        "jpeg": ("image", "image/jpeg"),
        "gif": ("image", "image/gif"),
        "webp": ("image", "image/webp"),
        "pdf": ("file", "application/pdf"),
        "mp3": ("audio", "audio/mpeg"),
        "wav": ("audio", "audio/wav"),
    }


def test_an_extension_outside_the_table_needs_an_explicit_mime_type(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("a,b\n")
    with pytest.raises(ValueError, match=r"mime type of .*rows.csv.*pass mime_type="):
        Part.file(path)
    assert Part.file(path, "text/csv").mime_type == "text/csv"


def test_content_is_never_sniffed(tmp_path):
    path = tmp_path / "picture"  # PNG bytes, but no extension
    path.write_bytes(PNG)
    with pytest.raises(ValueError, match="extension missing"):
        Part.image(path)


def test_a_table_type_that_does_not_match_the_constructor_is_refused():
    with pytest.raises(ValueError, match=r"\(application/pdf\), not image; use Part.file"):
        Part.image("https://example.test/report.pdf")
    with pytest.raises(ValueError, match=r"needs a image/... mime type, got 'application/pdf'"):
        Part.image(b"x", "application/pdf")
    with pytest.raises(ValueError, match=r"needs a audio/... mime type"):
        Part.audio(b"x", "image/png")


def test_audio_from_the_table():
    assert Part.audio("https://example.test/a.mp3").mime_type == "audio/mpeg"
    assert Part.audio("https://example.test/a.wav").mime_type == "audio/wav"


# --------------------------------------------------------------------------- size ceiling


def test_the_ceiling_counts_decoded_bytes_and_names_both_sizes():
    assert Part.file(b"x" * 10, "text/plain", max_bytes=10).size == 10
    too_big = r"the file part is 11 bytes, over the 10-byte limit"
    with pytest.raises(PartTooLargeError, match=too_big) as caught:
        Part.file(b"x" * 11, "text/plain", max_bytes=10)
    assert (caught.value.size, caught.value.limit, caught.value.part_type) == (11, 10, "file")
    assert isinstance(caught.value, ValueError)
    again = pickle.loads(pickle.dumps(caught.value))
    assert str(again) == str(caught.value)


def test_the_process_wide_ceiling_applies_everywhere_and_a_call_may_override_it(png_file):
    assert get_max_part_bytes() == DEFAULT_MAX_PART_BYTES
    previous = set_max_part_bytes(8)
    try:
        with pytest.raises(PartTooLargeError):
            Part.image(png_file)
        with pytest.raises(PartTooLargeError):
            Part("image", mime_type="image/png", data=PNG_B64)
        with pytest.raises(PartTooLargeError):
            ToolResult.from_dict(
                {
                    "output": "",
                    "isError": False,
                    "parts": [{"type": "image", "mimeType": "image/png", "data": PNG_B64}],
                }
            )
        assert Part.image(png_file, max_bytes=len(PNG)).size == len(PNG)
        assert Part.from_dict(
            {"type": "image", "mimeType": "image/png", "data": PNG_B64}, max_bytes=1000
        ).size == len(PNG)
    finally:
        set_max_part_bytes(previous)
    with pytest.raises(ValueError, match=r"takes an int >= 0"):
        set_max_part_bytes(-1)


# --------------------------------------------------------------------------- the record


def test_a_part_is_frozen_and_equal_by_value():
    part = Part.image(PNG, "image/png")
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.data = "AAAA"  # type: ignore[misc]
    assert part == Part("image", mime_type="image/png", data=PNG_B64)
    assert hash(part) == hash(Part("image", mime_type="image/png", data=PNG_B64))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"type": ""}, "type"),
        ({"type": "text"}, "text"),
        ({"type": "text", "text": "x", "data": "AAAA"}, "data"),
        ({"type": "image", "data": "AAAA"}, "mimeType"),
        ({"type": "image", "mime_type": "image/png"}, "data"),
        (
            {"type": "image", "mime_type": "image/png", "data": "AAAA", "url": "https://x.test/a"},
            "data",
        ),
        ({"type": "image", "mime_type": "image/png", "data": "AAA"}, "data"),
        ({"type": "image", "mime_type": "image/png", "data": "AA\nAA=="}, "data"),
        ({"type": "image", "mime_type": "image/png", "data": "A-_A"}, "data"),
    ],
)
def test_a_malformed_record_is_refused_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=rf"Part.{message}\b"):
        Part(**fields)


def test_an_unknown_type_is_carried_as_it_is():
    part = Part.from_dict({"type": "video", "mimeType": "video/mp4", "url": "https://x.test/v.mp4"})
    assert part.type == "video" and part.to_dict()["type"] == "video"


# --------------------------------------------------------------------------- never the data


def test_data_never_shows_in_a_repr_a_summary_or_an_error():
    secret = b"SECRET-PIXELS" * 10
    encoded = base64.b64encode(secret).decode()
    part = Part.image(secret, "image/png", name="s.png")
    result = ToolResult.ok("here", parts=[part])
    shown = [
        repr(part),
        str(part),
        repr(result),
        str(part.summary()),
        part.describe(),
        part.placeholder(),
    ]
    with pytest.raises(PartTooLargeError) as too_big:
        Part.image(secret, "image/png", max_bytes=1)
    shown.append(str(too_big.value))
    with pytest.raises(WireFormatError) as bad:
        ToolResult.from_dict(
            {
                "output": "",
                "isError": False,
                "parts": [{"type": "image", "mimeType": "image/png", "data": encoded + "!"}],
            }
        )
    shown.append(str(bad.value))
    for text in shown:
        assert encoded[:20] not in text and "SECRET" not in text, text
    assert repr(part) == "<Part image image/png 130 bytes 's.png'>"
    assert part.summary() == {"type": "image", "mimeType": "image/png", "bytes": 130}


def test_the_familys_prose_and_placeholder_strings():
    audio = Part.audio(b"ID3" + bytes(97), "audio/mpeg")
    assert audio.describe() == "audio (audio/mpeg, 100 bytes)"
    assert audio.placeholder() == "[unsupported audio part (audio/mpeg, 100 bytes)]"
    url_part = Part.image("https://x.test/a.png")
    assert url_part.placeholder() == "[unsupported image part (image/png, 0 bytes)]"


# --------------------------------------------------------------------------- on a result


def test_a_result_without_parts_is_byte_identical_to_before():
    assert ToolResult.ok("42").to_json() == '{"output":"42","isError":false}'
    assert ToolResult.ok("42", parts=[]) == ToolResult.ok("42")
    assert ToolResult.ok("42", parts=[]).to_json() == '{"output":"42","isError":false}'
    assert "parts" not in ToolResult.ok("42", {"k": 1}).to_dict()


def test_wire_json_puts_parts_after_metadata_with_the_familys_keys_in_order():
    result = ToolResult.ok(
        "two parts",
        {"rows": 2},
        parts=[
            Part.image(PNG, "image/png", name="chart.png"),
            Part.file("https://example.test/r.pdf"),
            Part.from_text("caption"),
        ],
    )
    assert result.to_json() == (
        '{"output":"two parts","isError":false,"metadata":{"rows":2},"parts":['
        f'{{"type":"image","mimeType":"image/png","data":"{PNG_B64}","name":"chart.png"}},'
        '{"type":"file","mimeType":"application/pdf","url":"https://example.test/r.pdf"},'
        '{"type":"text","text":"caption"}]}'
    )
    back = ToolResult.from_json(result.to_json())
    assert back == result and back.to_json() == result.to_json()
    assert isinstance(back.parts, tuple) and isinstance(back.parts[0], Part)


def test_parts_ride_on_error_and_constructor_forms_too():
    shot = Part.image(PNG, "image/png")
    assert ToolResult.error("failed", parts=[shot]).parts == (shot,)
    assert ToolResult("x", False, None, [shot]).parts == (shot,)
    with pytest.raises(TypeError, match=r"wrap it in a list: parts=\[part\]"):
        ToolResult.ok("x", parts=shot)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"parts\[0\] must be a Part, got dict"):
        ToolResult("x", False, None, [{"type": "text", "text": "x"}])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("parts", "field", "problem"),
    [
        ("nope", "parts", "must be an array of parts"),
        ([7], "parts[0]", "must be a JSON object"),
        ([{"mimeType": "image/png"}], "parts[0].type", "is missing"),
        (
            [
                {"type": "text", "text": "ok"},
                {"type": "image", "mimeType": 5, "url": "https://x.test/a.png"},
            ],
            "parts[1].mimeType",
            "must be a string, got number 5",
        ),
        ([{"type": "audio", "mimeType": "audio/wav", "data": "%%%%"}], "parts[0].data", "base64"),
    ],
)
def test_reading_malformed_parts_names_the_field(parts, field, problem):
    with pytest.raises(WireFormatError, match=problem) as caught:
        ToolResult.from_dict({"output": "x", "isError": False, "parts": parts})
    assert caught.value.field == field


# --------------------------------------------------------------------------- through the layers


def test_parts_survive_a_tool_a_host_and_drive_after_a_question():
    from toolnexus import Answer, Host, Request, Toolkit, tool
    from toolnexus._context import ToolContext
    from toolnexus.testing import drive

    shot = Part.image(PNG, "image/png", name="shot.png")

    @tool
    def screenshot(ctx: ToolContext) -> ToolResult:
        """Asks first, then returns a screenshot."""
        if ctx.answer is None:
            return ToolResult.pending(Request("approval", "Take a screenshot?"))
        return ToolResult.ok("here it is", parts=[shot])

    run = drive(screenshot, {}, [True])
    assert run.result.parts == (shot,) and run.requests[0].prompt == "Take a screenshot?"
    with Host(Toolkit([screenshot]), wait_for=Answer.accept) as host:
        assert host.call("screenshot", {}).parts == (shot,)
