"""What the program and the image side both read: environment variable names, mount paths, the
recipes' batch arithmetic, the self-test's floors. It imports nothing of the project."""
