"""The bundled sample (`landing/`), its generators, and the walkthrough `probcep demo` runs."""
