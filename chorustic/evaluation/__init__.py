"""Running methods on datasets under every protocol context, and the result files they leave."""
