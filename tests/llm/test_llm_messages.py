"""Messages: text or a list of text and PNG parts."""

from kforge.llm import ImagePart, Message, TextPart


def test_shortcuts_build_the_usual_turns() -> None:
    assert Message.system("s") == Message(role="system", content="s")
    assert Message.assistant("a").text == "a"
    plain = Message.user("look")
    assert plain.content == "look" and plain.parts == (TextPart(text="look"),)


def test_a_user_turn_with_images_puts_the_text_first() -> None:
    message = Message.user("compare", b"png-1", b"png-2")
    assert message.parts == (TextPart(text="compare"), ImagePart(data=b"png-1"), ImagePart(data=b"png-2"))
    assert message.text == "compare"


def test_parts_can_be_given_as_a_list_of_dicts() -> None:
    message = Message.model_validate(
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "data": b"x"}]}
    )
    assert isinstance(message.parts[1], ImagePart) and message.parts[1].media_type == "image/png"
