"""The transformers backend against a tiny randomly initialised vision-language model (LLaVA layout: a CLIP
vision tower and a Llama text model) built from configs here and loaded from its folder, as a real
checkpoint would be. No download: HF_HUB_OFFLINE=1."""

import io

import pytest
from PIL import Image

from lmm.chat import ImageInput, ModelUnavailable
from lmm.scoring import configured_scorer, score_images

pytestmark = pytest.mark.django_db

WORDS = ["<pad>", "<s>", "</s>", "<unk>", "<image>", "Yes", "No", "yes", "no", "YES", "▁No", "Does", "this",
         "picture", "show", "?", "Answer", "the", "question", "with", "either", "or", "and", "nothing", "else",
         ".", '"', "USER:", "ASSISTANT:"] + [f"w{i}" for i in range(40)]  # fmt: skip
TEMPLATE = (
    "{% for m in messages %}USER: {% for c in m['content'] %}{% if c['type'] == 'image' %}<image> "
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %} ASSISTANT:{% endfor %}"
)


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory):
    import os

    os.environ["HF_HUB_OFFLINE"] = "1"
    from search.facade import ensure_torchvision_ops

    ensure_torchvision_ops()
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    torch.manual_seed(0)
    vocab = {word: index for index, word in enumerate(WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )  # fmt: skip
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=fast, patch_size=8, vision_feature_select_strategy="default", chat_template=TEMPLATE,
        num_additional_image_tokens=1,
    )  # fmt: skip
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=32,
            patch_size=8,
        ),
        text_config=LlamaConfig(
            vocab_size=len(WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=256, pad_token_id=0,
        ),
        image_token_index=vocab["<image>"], vision_feature_select_strategy="default", vision_feature_layer=-1,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("tiny-vlm")
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def photo(colour) -> ImageInput:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(out, "JPEG")
    return ImageInput(out.getvalue(), "image/jpeg")


def test_scores_are_the_first_generated_tokens_yes_no_share(tiny_vlm, settings):
    import torch

    settings.QUIRE_LMM_MODEL = f"local:{tiny_vlm}"
    scorer = configured_scorer()
    assert scorer.name == f"local:{tiny_vlm}"
    vocab = {word: index for index, word in enumerate(WORDS)}
    assert scorer.yes_ids == sorted([vocab["Yes"], vocab["yes"], vocab["YES"]])
    assert scorer.no_ids == sorted([vocab["No"], vocab["no"], vocab["▁No"]])
    image = photo((200, 40, 40))
    answer = scorer.ask("w1 w2", image)
    # INQUIRE's way, independently: generate one token with its scores and read the same tokens.
    messages = [
        {
            "role": "user",
            "content": [{"type": "image"}, {"type": "text", "text": scorer.prompt.replace("{query}", "w1 w2")}],
        }
    ]
    text = scorer.processor.apply_chat_template(messages, add_generation_prompt=True)
    inputs = scorer.processor(images=Image.open(io.BytesIO(image.data)), text=text, return_tensors="pt")
    generated = scorer.model.generate(
        **inputs, max_new_tokens=1, do_sample=False, output_scores=True, return_dict_in_generate=True
    )
    probabilities = torch.softmax(generated.scores[0][0].float(), dim=-1)
    p_yes, p_no = float(probabilities[scorer.yes_ids].sum()), float(probabilities[scorer.no_ids].sum())
    assert answer.score == pytest.approx(p_yes / (p_yes + p_no), rel=1e-4)
    assert answer.p_yes == pytest.approx(p_yes, rel=1e-4) and 0 < answer.score < 1
    assert answer.doubtful  # random weights spread their probability over the whole vocabulary


def test_the_local_model_goes_through_the_answer_cache(tiny_vlm, settings):
    settings.QUIRE_LMM_MODEL = f"local:{tiny_vlm}"
    scorer = configured_scorer()
    images = {1: photo((10, 200, 10)), 2: photo((10, 10, 200))}
    first = score_images(scorer, "w3", images)
    assert first.asked == 2 and scorer.usage.requests == 2
    again = score_images(scorer, "w3", images)
    assert again.asked == 0 and scorer.usage.requests == 2
    assert again.answers[1].score == pytest.approx(first.answers[1].score)


def test_a_folder_without_a_model_says_so(tmp_path, settings):
    settings.QUIRE_LMM_MODEL = f"local:{tmp_path}"
    with pytest.raises(ModelUnavailable, match="cannot be loaded"):
        configured_scorer()
