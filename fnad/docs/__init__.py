"""fnad's documentation: the list of public names (`fnad.docs.public`) and the site
build. `python -m fnad.docs` builds the HTML into docs/_build/html from a source
checkout (the pages live in the repository's docs/ folder, not in the package)."""
