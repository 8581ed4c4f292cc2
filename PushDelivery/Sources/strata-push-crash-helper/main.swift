print("strata-push-crash-helper")
