int helper(void);
int helper(void) { return 7; }
