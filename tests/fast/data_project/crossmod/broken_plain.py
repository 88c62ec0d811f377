syntax error here (
