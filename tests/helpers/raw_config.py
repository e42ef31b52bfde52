"""The smallest AWS config the model parses, as parse_config takes it: section keys without
Pulumi's namespace (tests/helpers/bad_stacks.py has the namespaced stack-file form)."""

ADMIN = ["arn:aws:iam::111122223333:role/platform-admins"]
AWS = {
    "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
    "cluster": {"admin_principal_arns": ADMIN},
}
