from ctransformers import AutoModelForCausalLM
from pathlib import Path


MODEL_PATH = (
    Path(__file__).parent
    / "models"
    / "tiny.gguf"
)

model = None


def load_model():
    global model

    if model is None:
        model = AutoModelForCausalLM.from_pretrained(
            str(MODEL_PATH),
            model_type="llama"
        )

    return model


def ask(prompt):
    llm = load_model()

    return llm(
        prompt,
        max_new_tokens=100
    )
