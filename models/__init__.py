"""acprof's own reference models and the one catalogue of them.

A library: `from models import reference_models` (the catalogue: name -> how to build, export and
train the model), `from models import export` (compile and save a model with its training-step
specs; it knows no catalogue), `from models import training_step` (one step as acprof runs it).
The commands are in __main__.py: `python3 models export|export-all|check ...` from the repository
root, or `python3 -m models ...` with the root on PYTHONPATH. Importing the package imports
nothing else, so that a caller that needs one module pays for that one alone.
"""
