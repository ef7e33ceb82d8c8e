"""The yes/no scorer over a local Hugging Face `transformers` vision-language model (a GPU worker's).

One forward pass per (prompt, image); the next-token distribution after the chat template's assistant
turn is the first generated token's (what INQUIRE read from `generate(..., output_scores=True)`).
p(Yes) sums every single-token spelling of the answer word the tokenizer has ("Yes", "yes", "YES", with
a leading space, and SentencePiece's "▁" and byte-level BPE's "Ġ" forms), as INQUIRE read each model
family's own answer token; likewise p(No). Loaded with `from_pretrained` from a folder (set
HF_HUB_OFFLINE=1 where the hub cannot be reached), the path a real checkpoint takes.
"""

import io
import threading
from collections.abc import Iterable, Sequence

from search.facade import ensure_torchvision_ops

from . import prompts, yesno
from .chat import ImageInput, ModelUnavailable, OnAnswer, Usage

SPACE_MARKS = ("", "▁", "Ġ")


class LocalScorer:
    def __init__(self, path: str, *, prompt: str = prompts.OPEN_MODEL, device: str | None = None) -> None:

        ensure_torchvision_ops()  # transformers' image processors import torchvision
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        try:
            self.processor = AutoProcessor.from_pretrained(path)
            self.model = AutoModelForImageTextToText.from_pretrained(path)
        except (OSError, ValueError) as error:
            raise ModelUnavailable(f"The local model at {path} cannot be loaded: {error}") from None
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()  # type: ignore[arg-type]  # transformers' stubs type `to` for models only
        self.path, self.prompt = path, prompt
        self.yes_ids = self._token_ids(yesno.YES_VARIANTS)
        self.no_ids = self._token_ids(yesno.NO_VARIANTS)
        if not self.yes_ids or not self.no_ids:
            raise ModelUnavailable(f"The tokenizer of {path} has no single token for Yes or No.")
        self.usage = Usage()
        self._lock = threading.Lock()  # one forward pass at a time on the device

    @property
    def name(self) -> str:
        return f"local:{self.path}"

    def _token_ids(self, words: Iterable[str]) -> list[int]:
        tokenizer = self.processor.tokenizer
        ids = set()
        for word in words:
            for mark in SPACE_MARKS:
                token = mark + word.strip() if mark else word
                token_id = tokenizer.convert_tokens_to_ids(token)
                if token_id is not None and token_id != tokenizer.unk_token_id:
                    ids.add(int(token_id))
        return sorted(ids)

    def ask(self, query: str, image: ImageInput) -> yesno.YesNo:
        return self.ask_prompt(prompts.render(self.prompt, query), image)

    def ask_prompt(self, prompt: str, image: ImageInput) -> yesno.YesNo:
        import torch
        from PIL import Image

        try:
            with Image.open(io.BytesIO(image.data)) as opened:
                picture = opened.convert("RGB")
        except (OSError, ValueError) as error:
            raise ModelUnavailable(f"The image cannot be read: {error}") from None
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
        text = self.processor.apply_chat_template(messages, add_generation_prompt=True)
        inputs = self.processor(images=picture, text=text, return_tensors="pt").to(self.device)
        with self._lock, torch.no_grad():
            logits = self.model(**inputs).logits[0, -1].float()
        probabilities = torch.softmax(logits, dim=-1)
        p_yes = float(probabilities[self.yes_ids].sum())
        p_no = float(probabilities[self.no_ids].sum())
        answer = yesno.YesNo(p_yes / (p_yes + p_no) if p_yes + p_no > 0 else 0.0, p_yes, p_no)
        self.usage.count(int(inputs["input_ids"].shape[-1]), 0, answer)
        return answer

    def ask_many(
        self, questions: Sequence[tuple[str, ImageInput]], on_answer: OnAnswer | None = None
    ) -> list[yesno.YesNo]:
        """Each (prompt, image) in turn (the device runs one at a time), `on_answer` as each is done."""
        results = []
        for index, (prompt, image) in enumerate(questions):
            results.append(self.ask_prompt(prompt, image))
            if on_answer:
                on_answer(index, results[-1])
        return results
