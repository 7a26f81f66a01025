from .inference import ask
