"""The self-test plane: the post-deploy self-test Job, its access and its schedule."""
