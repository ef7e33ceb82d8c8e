"""The yes/no prompts INQUIRE used (its paper's appendix, Table A4; its src/lmm_utils.py get_lmm_prompt).

`{query}` is replaced by the query text. The chat-API prompt quotes the query and asks for "exactly" it;
open models get the unquoted question inside their own chat template (the OpenAI-compatible servers that
host them, vLLM and Ollama, apply the template themselves, so over the API the same chat prompt is sent).
"""

CHAT = 'Does this picture show exactly "{query}"?\nAnswer the question with either "Yes" or "No" and nothing else.'
OPEN_MODEL = 'Does this picture show {query}?\nAnswer the question with either "Yes" or "No" and nothing else.'
PALIGEMMA = "Q: Does this picture show {query}? Respond with yes or no.\nA:"


# Five phrasings of INQUIRE's question: a one-model panel disagrees where the question is hard.
PANEL = (
    CHAT,
    OPEN_MODEL,
    'Is this a photo of "{query}"?\nAnswer the question with either "Yes" or "No" and nothing else.',
    'Would an expert searching for "{query}" keep this photo?\nAnswer with either "Yes" or "No" and nothing else.',
    'Look closely. Does the photo match all of "{query}"?\nAnswer with either "Yes" or "No" and nothing else.',
)


def render(template: str, query: str) -> str:
    """The prompt for `query`. str.replace, not str.format: a query may hold braces."""
    if "{query}" not in template:
        raise ValueError('a yes/no prompt must contain "{query}" where the query text goes')
    return template.replace("{query}", query)
